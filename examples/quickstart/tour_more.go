package main

// tourMore is filled in by its feature area.
func tourMore(t tour) error { return nil }
