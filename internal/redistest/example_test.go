package redistest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/internal/redistest"
)

// A program without a testing.TB (the bench CLI, an example) starts a server
// and must close it.
func ExampleStartServer() {
	s, err := redistest.StartServer(redistest.WithPassword("secret"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pong, err := s.DoString(ctx, "PING")
	fmt.Println(pong, err)
	// Output: PONG <nil>
}
