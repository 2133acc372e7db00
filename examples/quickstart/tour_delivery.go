package main

// tourDelivery is filled in by its feature area.
func tourDelivery(t tour) error { return nil }
