package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/rlock"
)

// defaultAddr is the server used when neither -addr nor REDIS_URL is given.
const defaultAddr = "redis://127.0.0.1:6379"

// env is the outside world of one run: standard streams, environment, signal delivery and the lock backend. main
// passes the process's own; tests substitute them.
type env struct {
	stdin, stdout, stderr *os.File
	getenv                func(string) string
	environ               []string // the command's environment before RLOCK_NAME and RLOCK_OWNER are added
	dial                  func(rlock.Config) (locker, error)
	notify                func(chan<- os.Signal, ...os.Signal)
	stopNotify            func(chan<- os.Signal)
	// terminal reports whether rlock runs in the foreground of its controlling terminal, which exec then gives
	// to the command; nil: never.
	terminal func() bool
	// fromTerminal reports whether a signal rlock caught was delivered to the command by the terminal too, so
	// that forwarding it would deliver it twice; nil: exec's rule (a hangup, while the command has the terminal).
	fromTerminal func(os.Signal) bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == supervisorArg {
		os.Exit(supervisorMain(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], &env{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		getenv: os.Getenv, environ: os.Environ(),
		dial:   dialRlock,
		notify: signal.Notify, stopNotify: signal.Stop,
		terminal: terminalIsOurs,
	}))
}

// common holds the flags every subcommand accepts, before or after its name, and the writers of rlock's own
// output.
type common struct {
	addr    string
	json    bool
	verbose bool

	// red knows the secrets of -addr and REDIS_URL; stdout and stderr are the process's, through safeWriter: every
	// byte rlock writes itself goes through them (the command gets the files themselves).
	red            *redactor
	stdout, stderr io.Writer
}

// newCommon returns the common settings of a run: the writers, and -addr's default from REDIS_URL.
func newCommon(e *env) *common {
	c := &common{red: &redactor{}}
	c.stdout = &safeWriter{w: e.stdout, red: c.red}
	c.stderr = &safeWriter{w: e.stderr, red: c.red}
	c.setAddr(e.getenv("REDIS_URL"))
	if c.addr == "" {
		c.addr = defaultAddr
	}
	return c
}

// setAddr sets the Redis URL and registers its secrets for redaction.
func (c *common) setAddr(s string) {
	c.addr = s
	c.red.addURL(s)
}

// register adds the common flags to fs, with their current values as defaults (so that flags given before the
// subcommand are kept when it parses its own).
func (c *common) register(fs *flag.FlagSet) {
	fs.Var(&addrValue{c: c}, "addr", "Redis `URL`, redis://[user:password@]host:port[/db][?options] or rediss://...; "+
		"$REDIS_URL sets the default")
	fs.BoolVar(&c.json, "json", c.json, "print one JSON object per event (exec: on stderr; others: on stdout)")
	fs.BoolVar(&c.verbose, "v", c.verbose, "report every event on stderr, not only failures")
}

// reporter returns the reporter of a subcommand whose results go to out.
func (c *common) reporter(out, diag io.Writer) *reporter {
	return &reporter{out: out, diag: diag, json: c.json, verbose: c.verbose, red: c.red}
}

// subcommand runs one subcommand with the arguments after its name and returns the exit code.
type subcommand func(e *env, c *common, args []string) int

var subcommands = map[string]subcommand{
	"exec":         runExec,
	"status":       runStatus,
	"force-unlock": runForceUnlock,
	"lock":         runLock,
	"unlock":       runUnlock,
	"help":         runHelp,
}

// run parses the global flags and dispatches to the subcommand. It returns the process's exit code.
func run(args []string, e *env) int {
	c := newCommon(e)
	fs := flag.NewFlagSet("rlock", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a bad flag is reported below, in one line, not with the whole help
	c.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stderr, usage)
			return exitOK
		}
		fmt.Fprintln(c.stderr, globalFlagError(err, args))
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprint(c.stderr, usage)
		return exitUsage
	}
	name := fs.Arg(0)
	sub, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(c.stderr, "rlock: unknown command %q; run rlock -h for the list\n", name)
		return exitUsage
	}
	return sub(e, c, fs.Args()[1:])
}

// runHelp prints the usage on stdout.
func runHelp(_ *env, c *common, _ []string) int {
	fmt.Fprint(c.stdout, usage)
	return exitOK
}

// parseFlags parses a subcommand's flags. It returns false (and the exit code) when the run must end: -h (0) or a
// bad flag (64); the flag package has then printed the error and the subcommand's usage.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	return exitOK, true
}

// newFlagSet makes a subcommand's flag set with the common flags; synopsis is its usage line(s).
func newFlagSet(name, synopsis string, e *env, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\nRun rlock -h for the exit codes.\n")
	}
	c.register(fs)
	return fs
}

// usageError prints msg and the subcommand's usage, and returns exitUsage.
func usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(fs.Output(), "rlock %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return exitUsage
}

// addrValue is the -addr flag. It prints itself with the password masked, so that -h does not show the password
// of REDIS_URL, and registers the password of each URL it is given for redaction.
type addrValue struct{ c *common }

func (a *addrValue) String() string {
	if a == nil || a.c == nil {
		return ""
	}
	return redactURL(a.c.addr)
}

func (a *addrValue) Set(s string) error {
	a.c.setAddr(s)
	return nil
}

// waitValue is the -wait flag: a duration, or "forever" (the default).
type waitValue time.Duration

func (w *waitValue) String() string {
	if time.Duration(*w) < 0 {
		return "forever"
	}
	return time.Duration(*w).String()
}

func (w *waitValue) Set(s string) error {
	if s == "forever" || s == "inf" {
		*w = waitValue(waitForever)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s or 5m, or forever")
	}
	if d < 0 {
		return fmt.Errorf("must not be negative (0 makes a single attempt)")
	}
	*w = waitValue(d)
	return nil
}

// parseNamed parses the flags and the single NAME argument of status, force-unlock, lock and unlock. When ok is
// false the command exits with code (help, or a usage error already printed).
func parseNamed(fs *flag.FlagSet, args []string) (name string, code int, ok bool) {
	if code, ok := parseFlags(fs, args); !ok {
		return "", code, false
	}
	switch {
	case fs.NArg() == 0:
		return "", usageError(fs, "missing lock NAME"), false
	case fs.NArg() > 1:
		return "", usageError(fs, "unexpected arguments after NAME %q: %s (flags go before NAME)", fs.Arg(0),
			strings.Join(fs.Args()[1:], " ")), false
	case fs.Arg(0) == "":
		return "", usageError(fs, "the lock NAME must not be empty"), false
	}
	return fs.Arg(0), exitOK, true
}

// checkOwner validates an -owner value: "<uuid>:<n>", n a decimal integer (Redisson's <clientId>:<threadId>).
func checkOwner(owner string) error {
	i := strings.LastIndexByte(owner, ':')
	if i <= 0 || i == len(owner)-1 {
		return fmt.Errorf("-owner %q: want UUID:N, such as the owner printed by rlock lock or shown by rlock status", owner)
	}
	for _, r := range owner[i+1:] {
		if r < '0' || r > '9' {
			return fmt.Errorf("-owner %q: the part after the last ':' must be a decimal number (a thread id)", owner)
		}
	}
	return nil
}

// connect dials Redis, reporting a failure on rep. It returns the locker and the server's host:port (for
// messages). It blocks for at most the dial timeout.
func connect(e *env, c *common, watchdog time.Duration, rep *reporter, name string) (locker, string, int, bool) {
	cfg, err := dialConfig(c.addr, watchdog)
	if err != nil {
		return nil, "", rep.fail(describeInvalidAddr(c.addr, err), name), false
	}
	if msg, ok := checkURLPassword(c.addr, cfg.Conn); !ok {
		return nil, "", rep.fail(failure{exitUsage, "invalid -addr (or REDIS_URL): " + msg}, name), false
	}
	lk, err := e.dial(cfg)
	if err != nil {
		f := describe(err, cfg.Conn.Addr, name)
		if cfg.Conn.TLS != nil && cfg.Conn.Addr != "" && (errors.Is(err, context.DeadlineExceeded) || isTimeout(err)) &&
			answersPlainRESP(cfg.Conn.Addr, plainProbeTimeout) {
			f = failure{exitUnavailable, fmt.Sprintf("Redis at %s answers without TLS, and did not answer the TLS "+
				"handshake of rediss://: use redis:// (or enable TLS on the server: tls-port)", cfg.Conn.Addr)}
		}
		return nil, "", rep.fail(f, name), false
	}
	return lk, cfg.Conn.Addr, exitOK, true
}
