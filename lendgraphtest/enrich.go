package lendgraphtest

import "net/http"

func (s *Server) routeEnrich(mux *http.ServeMux) {}
