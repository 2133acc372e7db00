module github.com/lendgraph/lendgraph-go/internal/tools/release

go 1.25.0

require golang.org/x/mod v0.38.0
