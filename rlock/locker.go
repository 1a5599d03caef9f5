package rlock

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/future"
)

// Locker is a lock that MultiLock and RedLock combine. *Lock, *FairLock, *ReadLock and *WriteLock implement it;
// the locks of one MultiLock or RedLock may come from different Clients (RedLock: one per independent master).
type Locker interface {
	Name() string
	LockAsync(ctx context.Context) *future.Future[context.Context]
	LockLeaseAsync(ctx context.Context, lease time.Duration) *future.Future[context.Context]
	TryLockAsync(ctx context.Context, wait, lease time.Duration) *future.Future[context.Context]
	UnlockAsync(held context.Context) *future.Future[struct{}]
}

var (
	_ Locker = (*Lock)(nil)
	_ Locker = (*FairLock)(nil)
	_ Locker = (*ReadLock)(nil)
	_ Locker = (*WriteLock)(nil)
)
