package view

import "syscall"

// The ioctl requests that get and set a terminal's attributes.
const (
	ioctlGetTermios = syscall.TCGETS
	ioctlSetTermios = syscall.TCSETS
)
