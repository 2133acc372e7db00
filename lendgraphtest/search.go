package lendgraphtest

import "net/http"

func (s *Server) routeSearch(mux *http.ServeMux) {}

// searchState is the area's in-memory store (see areaState).
type searchState struct{}

func (st *searchState) init() {}

// startSearchHost starts the search host listener.
func (s *Server) startSearchHost() {}
