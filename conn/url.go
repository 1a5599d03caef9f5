package conn

import (
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// urlOptions maps each query option ParseURL accepts to the function that applies it. Anything else is an error
// that names the option, so that a typo (dial_timout) never silently leaves a default in place.
var urlOptions = map[string]func(c *Config, v string) error{
	"dial_timeout":          durationOption(func(c *Config) *time.Duration { return &c.DialTimeout }),
	"read_timeout":          durationOption(func(c *Config) *time.Duration { return &c.ResponseTimeout }),
	"response_timeout":      durationOption(func(c *Config) *time.Duration { return &c.ResponseTimeout }),
	"ping_interval":         durationOption(func(c *Config) *time.Duration { return &c.PingInterval }),
	"reconnect_min_backoff": durationOption(func(c *Config) *time.Duration { return &c.ReconnectMinBackoff }),
	"reconnect_max_backoff": durationOption(func(c *Config) *time.Duration { return &c.ReconnectMaxBackoff }),
	"pool_size":             intOption(func(c *Config) *int { return &c.PoolSize }),
	"event_loops":           intOption(func(c *Config) *int { return &c.EventLoops }),
	"client_name": func(c *Config, v string) error {
		c.ClientName = v
		return nil
	},
	"flush_policy": func(c *Config, v string) error {
		switch v {
		case FlushOnReply.String():
			c.FlushPolicy = FlushOnReply
		case FlushEager.String():
			c.FlushPolicy = FlushEager
		default:
			return errors.New("want " + FlushOnReply.String() + " or " + FlushEager.String())
		}
		return nil
	},
}

// ParseURL builds a Config from a URL of the form
//
//	redis://[[username]:password@]host[:port][/db][?option=value&...]
//	rediss://...   (the same, over TLS)
//
// The port defaults to 6379, the host to 127.0.0.1, the database to 0. rediss:// sets Config.TLS to a
// configuration that verifies the server against the system roots for the URL's host; replace its RootCAs (or the
// whole Config.TLS) for a private CA.
//
// Options (each at most once): dial_timeout, read_timeout (alias response_timeout), ping_interval,
// reconnect_min_backoff, reconnect_max_backoff take a Go duration ("500ms", "3s") or a whole number of seconds;
// pool_size and event_loops take an integer; client_name a string; flush_policy on_reply or eager. An unknown
// option is an error that names it. All errors match ErrInvalidConfig. ParseURL does not block and is safe for
// concurrent use.
func ParseURL(rawURL string) (Config, error) {
	var c Config
	u, err := url.Parse(rawURL)
	if err != nil {
		return c, invalid("URL: %v", err)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return c, invalid("URL scheme %q: want redis or rediss", u.Scheme)
	}
	if u.Opaque != "" {
		return c, invalid("URL %q: want redis://host:port", rawURL)
	}

	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "6379"
	}
	c.Addr = net.JoinHostPort(host, port)
	if c.TLS != nil {
		c.TLS.ServerName = host
	}

	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}

	if db := strings.Trim(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return c, invalid("URL database %q: want a non-negative integer", db)
		}
		c.DB = n
	}

	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return c, invalid("URL query: %v", err)
	}
	var unknown []string
	for name, values := range q {
		apply, ok := urlOptions[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		if len(values) != 1 {
			return c, invalid("URL option %s given %d times", name, len(values))
		}
		if err := apply(&c, values[0]); err != nil {
			return c, invalid("URL option %s=%q: %v", name, values[0], err)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := make([]string, 0, len(urlOptions))
		for name := range urlOptions {
			known = append(known, name)
		}
		sort.Strings(known)
		return c, invalid("unknown URL option(s) %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return c, nil
}

// durationOption parses a Go duration, or a whole number of seconds as other Redis clients' URLs use.
func durationOption(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			*field(c) = time.Duration(n) * time.Second
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return errors.New("want a duration such as 500ms or 3s, or whole seconds")
		}
		*field(c) = d
		return nil
	}
}

// intOption parses a decimal integer.
func intOption(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("want an integer")
		}
		*field(c) = n
		return nil
	}
}
