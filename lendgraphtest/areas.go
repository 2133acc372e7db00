package lendgraphtest

// areaState holds the in-memory stores of the feature areas. Each area
// adds its fields here and initialises them in init.
type areaState struct{}

func (a *areaState) init() {}

// startAreaListeners starts the listeners areas need besides the API and
// storage hosts (the search host).
func (s *Server) startAreaListeners() {}
