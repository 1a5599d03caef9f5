//go:build !linux

package main

import "syscall"

func caseSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
