package lendgraphtest

import "net/http"

func (s *Server) routeSavedFilters(mux *http.ServeMux) {}
