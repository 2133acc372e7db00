package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func TestQuickstartAgainstFake(t *testing.T) {
	t.Setenv(lendgraph.EnvAPIKey, "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"touring the in-process fake API",
		"Top agents in CA by transactions",
		"Iterated 250 agents across 3 pages",
		"members beyond the typed fields",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
