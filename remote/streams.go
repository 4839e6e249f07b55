package remote

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ensureStreams creates (or updates to this configuration) the turns and
// results streams and the workers bucket.
func ensureStreams(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: TurnsStream, Subjects: []string{TurnsSubject}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, MaxAge: keep, Duplicates: keep,
	}); err != nil {
		return nil, fmt.Errorf("create stream %s: %w", TurnsStream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: ResultsStream, Subjects: []string{resultsPrefix + "*"}, Retention: jetstream.LimitsPolicy,
		Storage: jetstream.FileStorage, MaxAge: keep, Duplicates: keep,
	}); err != nil {
		return nil, fmt.Errorf("create stream %s: %w", ResultsStream, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: workersBucket, TTL: workerTTL, Storage: jetstream.MemoryStorage})
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", workersBucket, err)
	}
	return kv, nil
}
