package rlock_test

import (
	"context"
	"fmt"
)

// Many readers or one writer; a writer may take the read lock too and keep it after the write lock (downgrade).
func ExampleReadWriteLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	rw := c.ReadWriteLock("catalog")

	w, err := rw.WriteLock().Lock(ctx)
	if err != nil {
		panic(err)
	}
	r, err := rw.ReadLock().Lock(w) // the writer's own read hold
	if err != nil {
		panic(err)
	}
	rw.WriteLock().Unlock(w)
	mode, _ := rw.Mode(ctx)
	fmt.Println("after the write unlock:", mode)

	other, err := rw.ReadLock().TryLock(ctx, 0, 0) // other readers may join now
	fmt.Println("another reader:", err)
	rw.ReadLock().Unlock(other)
	rw.ReadLock().Unlock(r)
	mode, _ = rw.Mode(ctx)
	fmt.Printf("after the readers: %q\n", mode)
	// Output:
	// after the write unlock: read
	// another reader: <nil>
	// after the readers: ""
}
