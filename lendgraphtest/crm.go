package lendgraphtest

import "net/http"

func (s *Server) routeCRM(mux *http.ServeMux) {}

// crmState is the area's in-memory store (see areaState).
type crmState struct{}

func (st *crmState) init() {}
