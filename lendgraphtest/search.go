package lendgraphtest

import "net/http"

func (s *Server) routeSearch(mux *http.ServeMux) {}
