package parquet_test

import (
	"context"
	"fmt"
	"os"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/parquet"
)

func ExampleDecode() {
	// A file DuckDB wrote: nested fields as JSON-encoded strings, which
	// decode into the row's nested fields.
	f, err := os.Open("../testdata/delivery/agents.parquet")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	st, _ := f.Stat()
	type row struct {
		ID     string `json:"id"`
		Office struct {
			City string `json:"city"`
		} `json:"office"`
		Tags []string `json:"tags"`
	}
	for r, err := range parquet.Decode[row](f, st.Size()) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(r.ID, r.Office.City, r.Tags)
	}
	// Output:
	// agt_0000001 Austin [luxury investors]
	// agt_0000002 Fresno []
	// agt_0000003  [relocation]
}

func ExampleRows() {
	srv, err := lendgraphtest.Start(lendgraphtest.WithRows("agents", 3))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	job, err := srv.Client().Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Fields: []string{"id"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	n := 0
	for a, err := range parquet.Rows(ctx, job) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if a.ID != "" {
			n++
		}
	}
	fmt.Println(n, "agents")
	// Output: 3 agents
}
