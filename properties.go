package lendgraph

// PropertiesService serves properties: search (List, All), detail, and the
// property-only calls (enrichment, count, chart, related records).
type PropertiesService struct {
	*ResourceService[Property]
}
