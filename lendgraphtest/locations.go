package lendgraphtest

import "net/http"

func (s *Server) routeLocations(mux *http.ServeMux) {}
