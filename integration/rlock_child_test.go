package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/conn"
	"github.com/locksmith-go/locksmith/rlock"
)

// childEnv carries "addr lockname watchdog" to a child process started from the test binary (see TestMain).
const childEnv = "LOCKSMITH_RLOCK_CHILD"

// runLockChild is the child's main: it takes the lock with the watchdog, prints "locked <owner>", and holds it
// (renewing) until its stdin closes — or until it is killed, which is the point.
func runLockChild() int {
	f := strings.Fields(os.Getenv(childEnv))
	if len(f) != 3 {
		fmt.Fprintln(os.Stderr, "child: bad", childEnv)
		return 2
	}
	addr, name := f[0], f[1]
	watchdog, err := time.ParseDuration(f[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	c, err := rlock.NewClient(rlock.Config{Conn: conn.Config{Addr: addr}, WatchdogTimeout: watchdog})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer c.Close()
	held, err := c.Lock(name).Lock(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	owner, _ := rlock.OwnerOf(held)
	fmt.Printf("locked %s\n", owner)
	io.Copy(io.Discard, os.Stdin) // the parent's end closing (parent gone) ends the child too
	return 0
}

// startLockChild starts the child and waits until it holds the lock; it returns the process and the owner id.
func startLockChild(t *testing.T, addr, name string, watchdog time.Duration) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s", childEnv, addr, name, watchdog))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child did not report the lock: %v", err)
	}
	owner, ok := strings.CutPrefix(strings.TrimSpace(line), "locked ")
	if !ok {
		t.Fatalf("child said %q", line)
	}
	return cmd, owner
}
