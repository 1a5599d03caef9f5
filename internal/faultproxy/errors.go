package faultproxy

import "errors"

var (
	// ErrClosed is returned when the proxy was closed.
	ErrClosed = errors.New("faultproxy: proxy is closed")
)
