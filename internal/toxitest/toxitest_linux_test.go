//go:build linux

package toxitest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether process pid exists and is not a zombie (an
// orphan's zombie waits for a reaper that a container may not have).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestNew_StopsAtCleanup: the server New starts is killed and waited for
// when its test ends.
func TestNew_StopsAtCleanup(t *testing.T) {
	var s *Server
	t.Run("server", func(t *testing.T) {
		s = New(t)
		if !alive(s.cmd.Process.Pid) {
			t.Fatal("the server is not running")
		}
	})
	if s == nil {
		t.Skip("no server started")
	}
	if s.cmd.ProcessState == nil {
		t.Error("the server was not waited for when its test ended")
	}
	if alive(s.cmd.Process.Pid) {
		t.Errorf("toxiproxy-server (pid %d) still runs after its test ended", s.cmd.Process.Pid)
	}
	s.Close() // again: nothing
}

const childEnv = "TOXITEST_CHILD"

// TestStart_DiesWithParent: a server whose test binary is killed (SIGKILL:
// no cleanup, no TestMain) does not outlive it. The test runs itself as a
// child that starts a server, prints its pid and waits to be killed.
func TestStart_DiesWithParent(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		s, err := Start()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("pid", s.cmd.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(1)
	}
	if _, err := Binary(); err != nil {
		t.Skipf("no toxiproxy-server: %v", err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestStart_DiesWithParent$")
	child.Env = append(os.Environ(), childEnv+"=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "pid "))
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("toxiproxy-server (pid %d) is not running", pid)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	for deadline := time.Now().Add(20 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			// Do not leave it behind for the next run.
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("toxiproxy-server (pid %d) outlived the test binary that started it", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
