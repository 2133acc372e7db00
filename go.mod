module github.com/lendgraph/lendgraph-go

go 1.25.0

require (
	github.com/go-json-experiment/json v0.0.0-20251027170946-4849db3c2f7e
	github.com/google/go-cmp v0.7.0
	github.com/google/go-querystring v1.2.0
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/klauspost/compress v1.20.3
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.47.0
	golang.org/x/time v0.15.0
)

require (
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/mattn/go-isatty v0.0.22 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
