package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/heddlewf/heddle/internal/loopback"
)

// proc is one child process the runner started.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
	log  *os.File
}

// procs tracks every child so that the end of a run, or a failing test,
// kills them all: none may outlive the runner.
type procs struct {
	mu  sync.Mutex
	all map[*proc]bool
}

func newProcs() *procs { return &procs{all: map[*proc]bool{}} }

// start runs bin with args, its output appended to logPath. Pdeathsig asks
// the kernel to kill the child if the runner itself dies.
func (ps *procs) start(name, bin string, args []string, logPath string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("chaos: starting %s (%s %v): %w", name, bin, args, err), f.Close())
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: f}
	go func() {
		// Wait's error is the exit status, and the faults kill processes
		// on purpose; p.done is all anyone needs. The log file is the
		// child's output, complete once it exited.
		_ = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	ps.mu.Lock()
	ps.all[p] = true
	ps.mu.Unlock()
	return p, nil
}

// signal sends sig to p. A process that has already exited is no error: the
// fault has nothing left to do. Failing to signal a child of ours otherwise
// means the run can no longer control its cluster (and kill would wait for
// an exit that never comes), so the run stops.
func (p *proc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		panic(fmt.Sprintf("chaos: sending %v to %s: %v", sig, p.name, err))
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (ps *procs) kill(p *proc) {
	p.signal(syscall.SIGKILL)
	<-p.done
	ps.forget(p)
}

// stop asks the process to end (SIGCONT first, in case it is paused, then
// SIGTERM) and kills it if it has not ended within grace.
func (ps *procs) stop(p *proc, grace time.Duration) {
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
	ps.forget(p)
}

func (ps *procs) forget(p *proc) {
	ps.mu.Lock()
	delete(ps.all, p)
	ps.mu.Unlock()
}

// killAll kills every process still running.
func (ps *procs) killAll() {
	ps.mu.Lock()
	all := make([]*proc, 0, len(ps.all))
	for p := range ps.all {
		all = append(all, p)
	}
	ps.mu.Unlock()
	for _, p := range all {
		ps.kill(p)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// freePort returns a loopback address nobody listens on right now, below
// the ephemeral range so that no outgoing connection takes it before the
// node binds it (nodes are restarted on the same addresses).
func freePort() (string, error) {
	return loopback.Reserve()
}

// BuildBinary builds ./cmd/heddle of the module the working directory is
// in, into dir, and returns the binary's path.
func BuildBinary(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("chaos: go env GOMOD: %w", err)
	}
	mod := string(out)
	for len(mod) > 0 && (mod[len(mod)-1] == '\n' || mod[len(mod)-1] == '\r') {
		mod = mod[:len(mod)-1]
	}
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("chaos: not inside a Go module (go env GOMOD is %q)", mod)
	}
	bin := filepath.Join(dir, "heddle")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/heddle")
	cmd.Dir = filepath.Dir(mod)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("chaos: go build ./cmd/heddle: %v\n%s", err, b)
	}
	return bin, nil
}
