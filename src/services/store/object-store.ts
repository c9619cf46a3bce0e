import { type ObjectStore, Objm, StorageType } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * A writer's handle on the JetStream object store `bucket` (file storage, `replicas` replicas),
 * created or opened on the first call and shared by later calls; a failed attempt is forgotten,
 * so the next call tries again. For the coordinator's aggregate and snapshot stores.
 */
export function lazyObjectStore(
  nc: NatsConnection,
  bucket: string,
  options: { readonly replicas: number; readonly description: string },
): () => Promise<ObjectStore> {
  let store: Promise<ObjectStore> | undefined;
  return () => {
    if (store === undefined) {
      const created = new Objm(nc).create(bucket, {
        storage: StorageType.File,
        replicas: options.replicas,
        description: options.description,
      });
      store = created;
      created.catch(() => {
        if (store === created) store = undefined;
      });
    }
    return store;
  };
}
