//go:build linux

package toxitest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server when the process that
// started it dies, even by SIGKILL or a test binary's timeout panic, which
// run no cleanup. (Linux sends the signal when the starting OS thread
// exits; the Go runtime keeps its threads for the life of the process.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
