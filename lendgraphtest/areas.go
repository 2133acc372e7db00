package lendgraphtest

// areaState holds the in-memory stores of the feature areas, one embedded
// struct per area, each defined and initialised in the area's own file.
type areaState struct {
	enrichState
	deliveryState
	searchState
	marketState
	crmState
	savedFiltersState
	locationsState
}

func (a *areaState) init() {
	a.enrichState.init()
	a.deliveryState.init()
	a.searchState.init()
	a.marketState.init()
	a.crmState.init()
	a.savedFiltersState.init()
	a.locationsState.init()
}

// close releases what areas hold outside memory (delivery files).
func (a *areaState) close() {
	a.deliveryState.close()
}

// startAreaListeners starts the listeners areas need besides the API and
// storage hosts.
func (s *Server) startAreaListeners() {
	s.startSearchHost()
}
