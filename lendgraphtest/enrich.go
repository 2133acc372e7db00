package lendgraphtest

import "net/http"

func (s *Server) routeEnrich(mux *http.ServeMux) {}

// enrichState is the area's in-memory store (see areaState).
type enrichState struct{}

func (st *enrichState) init() {}
