module github.com/lendgraph/lendgraph-go/parquet

go 1.25.0

require (
	github.com/go-json-experiment/json v0.0.0-20251027170946-4849db3c2f7e
	github.com/google/go-cmp v0.7.0
	github.com/klauspost/compress v1.20.3
	github.com/lendgraph/lendgraph-go v0.0.0-00010101000000-000000000000
	github.com/parquet-go/parquet-go v0.32.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/andybalholm/brotli v1.1.1 // indirect
	github.com/google/go-querystring v1.2.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/parquet-go/bitpack v1.0.0 // indirect
	github.com/parquet-go/jsonlite v1.0.0 // indirect
	github.com/pierrec/lz4/v4 v4.1.21 // indirect
	github.com/twpayne/go-geom v1.6.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

replace github.com/lendgraph/lendgraph-go => ../
