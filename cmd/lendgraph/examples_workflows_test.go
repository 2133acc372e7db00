package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflowExamples are the orchestrator files shipped in examples/, each
// running an export in three steps: plan, one run a shard, commit.
var workflowExamples = []string{"../../examples/kubernetes/export-job.yaml", "../../examples/argo/export-workflow.yaml"}

// container is one container of a workflow file: its command line and the
// variables its manifest defines for it.
type container struct {
	where string   // a path in the YAML, for messages
	argv  []string // command, then args
	vars  map[string]string
}

// readYAML decodes every document of a YAML file.
func readYAML(t *testing.T, name string) []any {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var docs []any
	dec := yaml.NewDecoder(f)
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// strs is a YAML list of strings.
func strs(t *testing.T, where string, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	if v != nil && !ok {
		t.Fatalf("%s: not a list: %v", where, v)
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("%s[%d]: %v is not a string (quote it)", where, i, x)
		}
		out[i] = s
	}
	return out
}

// containers finds every container of the documents: a pod's containers
// and initContainers, an Argo template's container and script. vars are
// the container's env names, and the keys of the ConfigMaps of the same
// file it takes with envFrom, with their values when the file gives them.
func containers(t *testing.T, docs []any) []container {
	t.Helper()
	configMaps := map[string]map[string]any{}
	for _, d := range docs {
		if m, ok := d.(map[string]any); ok && m["kind"] == "ConfigMap" {
			meta, _ := m["metadata"].(map[string]any)
			data, _ := m["data"].(map[string]any)
			configMaps[fmt.Sprint(meta["name"])] = data
		}
	}
	var out []container
	add := func(where string, c map[string]any) {
		ct := container{where: where, vars: map[string]string{}}
		ct.argv = append(strs(t, where+".command", c["command"]), strs(t, where+".args", c["args"])...)
		env, _ := c["env"].([]any)
		for _, e := range env {
			e, _ := e.(map[string]any)
			ct.vars[fmt.Sprint(e["name"])] = fmt.Sprint(e["value"])
		}
		from, _ := c["envFrom"].([]any)
		for _, f := range from {
			f, _ := f.(map[string]any)
			if ref, ok := f["configMapRef"].(map[string]any); ok {
				data, ok := configMaps[fmt.Sprint(ref["name"])]
				if !ok {
					t.Errorf("%s: envFrom names the ConfigMap %v, which the file does not define", where, ref["name"])
				}
				for k, v := range data {
					ct.vars[k] = fmt.Sprint(v)
				}
			}
		}
		out = append(out, ct)
	}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				switch k {
				case "containers", "initContainers":
					list, _ := v[k].([]any)
					for i, c := range list {
						if c, ok := c.(map[string]any); ok {
							add(fmt.Sprintf("%s.%s[%d]", where, k, i), c)
						}
					}
				case "container", "script":
					if c, ok := v[k].(map[string]any); ok {
						add(where+"."+k, c)
					}
				default:
					walk(where+"."+k, v[k])
				}
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", where, i), x)
			}
		}
	}
	for i, d := range docs {
		walk(fmt.Sprintf("doc%d", i), d)
	}
	return out
}

var (
	k8sVar      = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	argoParam   = regexp.MustCompile(`\{\{\s*([^}]*?)\s*\}\}`)
	placeholder = regexp.MustCompile(`^[A-Z][A-Z_|]*$`)
)

// checkInvocation checks a command line (after "lendgraph") against the
// CLI's own command tree: the subcommand exists, every flag is one it (or
// the root) defines and parses, the positional arguments are as many as it
// takes, a RESOURCE argument is a resource the CLI knows, and the required
// flags are there. It returns the command's path.
func checkInvocation(args []string) (string, error) {
	root := quietApp().rootCommand()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return "", err
	}
	if cmd == root {
		return "", errors.New("names no subcommand")
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return "", fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	pos := cmd.Flags().Args()
	if err := cmd.ValidateArgs(pos); err != nil {
		return "", fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	// The placeholders of the Use line, before its first flag.
	var holders []string
	for _, w := range strings.Fields(cmd.Use)[1:] {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
			break
		}
		holders = append(holders, w)
	}
	for i, p := range pos {
		switch {
		case i >= len(holders):
			return "", fmt.Errorf("%s takes %d arguments (%s), given %q", cmd.CommandPath(), len(holders), cmd.Use, pos)
		case !placeholder.MatchString(holders[i]):
			return "", fmt.Errorf("%s: usage %q has no placeholder for argument %q", cmd.CommandPath(), cmd.Use, p)
		case holders[i] == "RESOURCE" && !slices.Contains(resourceNames, p):
			return "", fmt.Errorf("%s: %q is not a resource (%s): a subcommand the CLI does not define?", cmd.CommandPath(), p, strings.Join(resourceNames, ", "))
		}
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return "", fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return "", fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	return cmd.CommandPath(), nil
}

// TestWorkflowExamplesAreValidInvocations parses the Kubernetes and Argo
// examples and checks every container's command line against the CLI's
// command tree (checkInvocation), after putting in the values the
// orchestrator would: a Kubernetes $(VAR) from the container's env or its
// ConfigMap (a variable it does not define would reach the command as
// written), an Argo {{workflow.parameters.X}} from the workflow's
// arguments, {{inputs.parameters.X}} of a template that declares it, and
// any other {{...}} (an item, an expression) as 0. Each file must run the
// three steps: export plan, export run and export commit.
func TestWorkflowExamplesAreValidInvocations(t *testing.T) {
	for _, name := range workflowExamples {
		t.Run(filepath.Base(name), func(t *testing.T) {
			docs := readYAML(t, name)
			params := map[string]string{}
			for _, d := range docs {
				spec, _ := d.(map[string]any)["spec"].(map[string]any)
				args, _ := spec["arguments"].(map[string]any)
				list, _ := args["parameters"].([]any)
				for _, p := range list {
					p, _ := p.(map[string]any)
					params["workflow.parameters."+fmt.Sprint(p["name"])] = fmt.Sprint(p["value"])
				}
			}
			inputs := argoInputs(docs)
			cs := containers(t, docs)
			var paths []string
			for _, c := range cs {
				if len(c.argv) == 0 || c.argv[0] != "lendgraph" {
					t.Errorf("%s: command %q is not a lendgraph invocation", c.where, c.argv)
					continue
				}
				var args []string
				for _, a := range c.argv[1:] {
					a = k8sVar.ReplaceAllStringFunc(a, func(m string) string {
						v, ok := c.vars[k8sVar.FindStringSubmatch(m)[1]]
						if !ok {
							t.Errorf("%s: %s is not defined for the container (Kubernetes would pass it as written)", c.where, m)
						}
						return v
					})
					a = argoParam.ReplaceAllStringFunc(a, func(m string) string {
						ref := argoParam.FindStringSubmatch(m)[1]
						if v, ok := params[ref]; ok {
							return v
						}
						if strings.HasPrefix(ref, "workflow.parameters.") {
							t.Errorf("%s: %s is not a parameter of the workflow", c.where, m)
						}
						if strings.HasPrefix(ref, "inputs.parameters.") && !inputs[ref] {
							t.Errorf("%s: %s is not an input of any template", c.where, m)
						}
						return "0"
					})
					args = append(args, a)
				}
				path, err := checkInvocation(args)
				if err != nil {
					t.Errorf("%s: lendgraph %s: %v", c.where, strings.Join(args, " "), err)
					continue
				}
				paths = append(paths, path)
			}
			for _, step := range []string{"lendgraph export plan", "lendgraph export run", "lendgraph export commit"} {
				if !slices.Contains(paths, step) {
					t.Errorf("no container runs %s (found %q)", step, paths)
				}
			}
		})
	}
}

// argoInputs are the input parameters the templates of an Argo file
// declare ("inputs.parameters.shard").
func argoInputs(docs []any) map[string]bool {
	out := map[string]bool{}
	for _, d := range docs {
		spec, _ := d.(map[string]any)["spec"].(map[string]any)
		templates, _ := spec["templates"].([]any)
		for _, tp := range templates {
			tp, _ := tp.(map[string]any)
			in, _ := tp["inputs"].(map[string]any)
			list, _ := in["parameters"].([]any)
			for _, p := range list {
				p, _ := p.(map[string]any)
				out["inputs.parameters."+fmt.Sprint(p["name"])] = true
			}
		}
	}
	return out
}

// TestCheckInvocationRefuses shows that checkInvocation fails on what a
// workflow file could get wrong, and passes today's one-command export.
func TestCheckInvocationRefuses(t *testing.T) {
	for _, bad := range [][]string{
		{"exprot", "agents", "--by", "state", "--out", "d"},
		{"export", "agents", "--by", "state", "--out", "d", "--no-such-flag"},
		{"export", "agents", "--concurrency", "many", "--out", "d"},
		{"export", "nosuchresource", "--by", "state", "--out", "d"},
		{"export", "agents", "loans", "--by", "state", "--out", "d"},
		{"--json"},
	} {
		if path, err := checkInvocation(bad); err == nil {
			t.Errorf("lendgraph %s: accepted as %s", strings.Join(bad, " "), path)
		}
	}
	ok := []string{"export", "agents", "--by", "state,city", "--out", "d", "--yes", "--json"}
	if path, err := checkInvocation(ok); err != nil || path != "lendgraph export" {
		t.Errorf("lendgraph %s: %s, %v", strings.Join(ok, " "), path, err)
	}
}
