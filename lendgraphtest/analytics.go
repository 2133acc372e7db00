package lendgraphtest

import "net/http"

func (s *Server) routeAnalytics(mux *http.ServeMux) {}
