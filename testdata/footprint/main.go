// Command footprint is a program that imports only package lendgraph and
// makes one call: TestModules_Footprint builds it and reads what it links.
package main

import (
	"context"
	"fmt"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func main() {
	c, err := lendgraph.NewClient()
	if err != nil {
		panic(err)
	}
	a, err := c.Agents.Get(context.Background(), "agt_1")
	fmt.Println(a, err)
}
