package lendgraphtest

import (
	"io"
	"net/http"
	"sync"
	"testing"
)

// TestMostGainedConcurrent asks for the same most-gained answer from many
// goroutines at the moment it becomes ready: the cached answer is written
// by one request while the others read it. Run with -race.
func TestMostGainedConcurrent(t *testing.T) {
	s := NewServer(t, WithDefaultRows(200))
	s.SetComputeDelay(0)
	key := s.DefaultCaller().Key
	for round := range 5 {
		url := s.URL + "/v1/market/movement/most-gained?limit=" + []string{"1", "2", "3", "4", "5"}[round]
		var wg sync.WaitGroup
		bodies := make([]string, 16)
		for g := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("x-api-key", key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 {
					t.Errorf("status %d: %s", resp.StatusCode, b)
				}
				bodies[g] = string(b)
			}()
		}
		wg.Wait()
		for _, b := range bodies[1:] {
			if b != bodies[0] {
				t.Fatalf("concurrent answers differ:\n%s\n%s", bodies[0], b)
			}
		}
	}
}
