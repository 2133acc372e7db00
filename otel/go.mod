module github.com/lendgraph/lendgraph-go/otel

go 1.25.0

require (
	github.com/lendgraph/lendgraph-go v0.0.0-20261123193311-affe32fe83c5
	go.opentelemetry.io/otel v1.46.0
	go.opentelemetry.io/otel/metric v1.46.0
	go.opentelemetry.io/otel/sdk v1.46.0
	go.opentelemetry.io/otel/sdk/metric v1.46.0
	go.opentelemetry.io/otel/trace v1.46.0
)
