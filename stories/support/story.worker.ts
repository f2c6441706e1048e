// The stories' worker: one engine over the database named by the worker's `name` (each story
// opens its own), with the model configured by the story (the seeded scripted provider).
import { exposeEngine } from '../../worker/index'

exposeEngine({ dbName: self.name })
