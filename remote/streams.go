package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ensureStreams creates the turns and results streams and the workers
// bucket when missing. An existing stream is left as it is (updating it
// while another process creates a consumer on it races inside the server),
// except a turns stream from before per-worker subjects: see upgradeTurns.
func ensureStreams(ctx context.Context, js jetstream.JetStream, ttl time.Duration) (jetstream.KeyValue, error) {
	for _, cfg := range []jetstream.StreamConfig{
		{Name: TurnsStream, Subjects: []string{workerSubjects}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.FileStorage, MaxAge: keep, Duplicates: keep},
		{Name: ResultsStream, Subjects: []string{resultsPrefix + "*"}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage, MaxAge: keep, Duplicates: keep},
	} {
		st, err := js.Stream(ctx, cfg.Name)
		if err == nil && cfg.Name == TurnsStream {
			err = upgradeTurns(ctx, js, st, cfg)
		}
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

// upgradeTurns moves a turns stream made when all workers shared one
// subject and one consumer to per-worker subjects: the shared consumer
// goes (a work-queue stream refuses a filtered consumer beside an
// unfiltered one) and the stream takes the new subjects. Jobs left on the
// old subject expire with the stream's MaxAge. Gateways and workers are
// upgraded together.
func upgradeTurns(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, cfg jetstream.StreamConfig) error {
	old := st.CachedInfo().Config
	if slices.Equal(old.Subjects, cfg.Subjects) {
		return nil
	}
	if err := st.DeleteConsumer(ctx, legacyConsumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("remove the shared consumer %s: %w", legacyConsumer, err)
	}
	old.Subjects = cfg.Subjects
	_, err := js.UpdateStream(ctx, old)
	return err
}
