package lendgraphtest

import "net/http"

func (s *Server) routeDelivery(mux *http.ServeMux) {}

// deliveryState is the area's in-memory store (see areaState).
type deliveryState struct{}

func (st *deliveryState) init() {}
