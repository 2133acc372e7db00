package main

// tourSearch is filled in by its feature area.
func tourSearch(t tour) error { return nil }
