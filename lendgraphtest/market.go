package lendgraphtest

import "net/http"

func (s *Server) routeMarket(mux *http.ServeMux) {}
