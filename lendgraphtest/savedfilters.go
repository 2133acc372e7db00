package lendgraphtest

import "net/http"

func (s *Server) routeSavedFilters(mux *http.ServeMux) {}

// savedFiltersState is the area's in-memory store (see areaState).
type savedFiltersState struct{}

func (st *savedFiltersState) init() {}
