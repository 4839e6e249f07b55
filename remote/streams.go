package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ensureStreams creates the turns and results streams and the workers
// bucket when missing: the gateway does (a worker may
// not; it binds to them: bindWorker). An existing stream is left as it is
// (updating it while another process creates a consumer on it races
// inside the server), except one from before per-worker subjects: see
// upgradeSubjects.
func ensureStreams(ctx context.Context, js jetstream.JetStream, ttl time.Duration) (jetstream.KeyValue, error) {
	for _, cfg := range []jetstream.StreamConfig{
		{Name: TurnsStream, Subjects: []string{workerSubjects}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.FileStorage, MaxAge: keep, Duplicates: keep},
		{Name: ResultsStream, Subjects: []string{resultsPrefix + "*.*"}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage, MaxAge: keep, Duplicates: keep},
	} {
		st, err := js.Stream(ctx, cfg.Name)
		if err == nil {
			err = upgradeSubjects(ctx, js, st, cfg)
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

// upgradeSubjects moves a stream made before per-worker subjects to them.
// The turns stream of when all workers shared one subject and one consumer:
// the shared consumer goes (a work-queue stream refuses a filtered consumer
// beside an unfiltered one). The results stream of when results carried no
// worker id. Jobs and results left on the old subjects expire with the
// stream's MaxAge. Gateways and workers are upgraded together.
func upgradeSubjects(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, cfg jetstream.StreamConfig) error {
	old := st.CachedInfo().Config
	if slices.Equal(old.Subjects, cfg.Subjects) {
		return nil
	}
	if cfg.Name == TurnsStream {
		if err := st.DeleteConsumer(ctx, legacyConsumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("remove the shared consumer %s: %w", legacyConsumer, err)
		}
	}
	old.Subjects = cfg.Subjects
	_, err := js.UpdateStream(ctx, old)
	return err
}

// bindWorker opens what a worker uses, which the gateway creates: the
// workers bucket and the folder object store. Until they exist (a worker
// started before its gateway ever ran) it waits, saying so once.
func bindWorker(ctx context.Context, js jetstream.JetStream, log *slog.Logger) (jetstream.KeyValue, jetstream.ObjectStore, error) {
	for said := false; ; said = true {
		kv, err := js.KeyValue(ctx, workersBucket)
		var obs jetstream.ObjectStore
		if err == nil {
			obs, err = js.ObjectStore(ctx, ObjectsBucket)
		}
		if err == nil {
			return kv, obs, nil
		}
		if !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, nil, fmt.Errorf("open bucket %s and object store %s: %w", workersBucket, ObjectsBucket, err)
		}
		if !said {
			log.Warn("worker waits for the gateway to create the NATS streams (start the gateway with agent.runner nats)")
		}
		sleep(ctx, time.Second)
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("wait for the gateway's NATS streams: %w", ctx.Err())
		}
	}
}
