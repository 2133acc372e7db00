package lendgraphtest

import "net/http"

func (s *Server) routeDelivery(mux *http.ServeMux) {}
