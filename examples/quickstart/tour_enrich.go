package main

// tourEnrichment is filled in by its feature area.
func tourEnrichment(t tour) error { return nil }
