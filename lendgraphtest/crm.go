package lendgraphtest

import "net/http"

func (s *Server) routeCRM(mux *http.ServeMux) {}
