//go:build !unix

package remote

const openFlags = 0
