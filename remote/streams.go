package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ensureStreams creates the turns and results streams and the workers
// bucket when missing. An existing stream is left as it is: updating it
// while another process creates a consumer on it races inside the server.
func ensureStreams(ctx context.Context, js jetstream.JetStream, ttl time.Duration) (jetstream.KeyValue, error) {
	for _, cfg := range []jetstream.StreamConfig{
		{Name: TurnsStream, Subjects: []string{TurnsSubject}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.FileStorage, MaxAge: keep, Duplicates: keep},
		{Name: ResultsStream, Subjects: []string{resultsPrefix + "*"}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage, MaxAge: keep, Duplicates: keep},
	} {
		_, err := js.Stream(ctx, cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			_, err = js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				err = nil // another process made it meanwhile
			}
		}
		if err != nil {
			return nil, fmt.Errorf("create stream %s: %w", cfg.Name, err)
		}
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: workersBucket, TTL: ttl, Storage: jetstream.MemoryStorage})
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", workersBucket, err)
	}
	return kv, nil
}
