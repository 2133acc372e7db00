package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lendgraph/lendgraph-go/export"
)

// validInvocation fails the test unless args (the command after
// "lendgraph") name a command of the tool whose flags and arguments it
// accepts, as cobra parses them before running anything.
func validInvocation(t *testing.T, args []string) {
	t.Helper()
	var stderr bytes.Buffer
	a := &app{env: env{stderr: &stderr}, started: true, cmdPath: "lendgraph"}
	root := a.rootCommand()
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		t.Errorf("lendgraph %s: no such command (%v)", strings.Join(args, " "), err)
		return
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("lendgraph %s: %v", strings.Join(args, " "), err)
		return
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		t.Errorf("lendgraph %s: %v", strings.Join(args, " "), err)
	}
}

// yamlFile decodes an example manifest.
func yamlFile(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

// at walks a decoded YAML document by keys and list indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("no %q in %v", k, v)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("no item %d in %v", k, v)
			}
			v = l[k]
		}
	}
	return v
}

func strs(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestKubernetesIndexedJob: the example Job is an Indexed Job whose
// container runs `lendgraph export run --plan URL` with no --shard, so
// each pod runs the shard of its JOB_COMPLETION_INDEX; run for real (the
// URL swapped for a file:// store), one process an index, then committed,
// it lands the whole plan.
func TestKubernetesIndexedJob(t *testing.T) {
	doc := yamlFile(t, "kubernetes/export-indexed-job.yaml")
	if at(t, doc, "kind") != "Job" || at(t, doc, "spec", "completionMode") != "Indexed" {
		t.Fatalf("not an Indexed Job: %v", doc)
	}
	command := strs(t, at(t, doc, "spec", "template", "spec", "containers", 0, "command"))
	if command[0] != "lendgraph" || slices.Contains(command, "--shard") {
		t.Fatalf("command %v: want lendgraph export run without --shard", command)
	}
	validInvocation(t, command[1:])
	// Exit 75 (another task is submitting the shard) is no failure: the
	// pod is started again without spending backoffLimitPerIndex.
	rule := at(t, doc, "spec", "podFailurePolicy", "rules", 0).(map[string]any)
	codes := at(t, rule, "onExitCodes")
	if rule["action"] != "Ignore" || at(t, codes, "operator") != "In" || !slices.Contains(at(t, codes, "values").([]any), any(exitBusy)) ||
		at(t, codes, "containerName") != at(t, doc, "spec", "template", "spec", "containers", 0, "name") {
		t.Errorf("podFailurePolicy %v: want exit %d ignored for the shard's container", rule, exitBusy)
	}
	if at(t, doc, "spec", "template", "spec", "restartPolicy") != "Never" {
		t.Error("a podFailurePolicy needs restartPolicy Never")
	}
	var envs []string
	for _, e := range at(t, doc, "spec", "template", "spec", "containers", 0, "env").([]any) {
		envs = append(envs, e.(map[string]any)["name"].(string))
	}
	if !slices.Contains(envs, "LENDGRAPH_API_KEY") {
		t.Errorf("the container's environment has no LENDGRAPH_API_KEY: %v", envs)
	}

	c := exportCLI(t, 600, 300)
	store := "file://" + c.path("store")
	plan := c.run("export", "plan", "agents", "--by", "state", "--filter", "state=CA", "--filter", "state=TX", "--filter", "state=NY", "--out", store)
	wantCode(t, plan, 0)
	i := slices.Index(command, "--plan")
	command[i+1] = store
	for _, index := range []string{"0", "1", "2"} {
		c.env = []string{jobIndexEnv + "=" + index}
		wantCode(t, c.run(command[1:]...), 0)
	}
	c.env = nil
	wantCode(t, c.run("export", "commit", "--plan", store), 0)
	if _, err := os.Stat(filepath.Join(c.path("store"), export.SuccessFile)); err != nil {
		t.Error(err)
	}
	if n := jobsRun(c.srv); n != 3 {
		t.Errorf("%d delivery jobs for 3 shards", n)
	}
}

// TestArgoWorkflow: every container of the example workflow runs a valid
// lendgraph command once its parameters are filled in, and the steps are
// plan, one step a shard, commit.
func TestArgoWorkflow(t *testing.T) {
	doc := yamlFile(t, "argo/export-workflow.yaml")
	if at(t, doc, "kind") != "Workflow" {
		t.Fatalf("not a Workflow: %v", at(t, doc, "kind"))
	}
	params := map[string]string{"inputs.parameters.index": "0", "item": "0"}
	for _, p := range at(t, doc, "spec", "arguments", "parameters").([]any) {
		m := p.(map[string]any)
		params["workflow.parameters."+m["name"].(string)] = m["value"].(string)
	}
	fill := regexp.MustCompile(`\{\{([^}]+)\}\}`)
	var commands [][]string
	for _, tpl := range at(t, doc, "spec", "templates").([]any) {
		m := tpl.(map[string]any)
		if m["container"] == nil {
			continue
		}
		command := strs(t, at(t, m, "container", "command"))
		for i, arg := range command {
			command[i] = fill.ReplaceAllStringFunc(arg, func(s string) string {
				v, ok := params[fill.FindStringSubmatch(s)[1]]
				if !ok {
					t.Errorf("template %s: unknown parameter %s", m["name"], s)
				}
				return v
			})
		}
		if command[0] != "lendgraph" {
			t.Errorf("template %s runs %v", m["name"], command)
			continue
		}
		validInvocation(t, command[1:])
		commands = append(commands, command[1:3])
	}
	want := [][]string{{"export", "plan"}, {"export", "run"}, {"export", "commit"}}
	if !slices.EqualFunc(commands, want, slices.Equal[[]string]) {
		t.Errorf("the workflow's commands are %v, want %v", commands, want)
	}
}
