package view

import "syscall"

// The ioctl requests that get and set a terminal's attributes.
const (
	ioctlGetTermios = syscall.TIOCGETA
	ioctlSetTermios = syscall.TIOCSETA
)
