package lendgraph

// MarketService serves market records, analytics and market movement.
type MarketService struct {
	*ResourceService[MarketRecord]
}
