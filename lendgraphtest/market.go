package lendgraphtest

import "net/http"

func (s *Server) routeMarket(mux *http.ServeMux) {}

// marketState is the area's in-memory store (see areaState).
type marketState struct{}

func (st *marketState) init() {}
