//go:build !linux

package toxitest

import "os/exec"

// dieWithParent does nothing here: only Linux can tie a child's life to its
// parent's; Close (or the Cleanup of New) stops the server.
func dieWithParent(*exec.Cmd) {}
