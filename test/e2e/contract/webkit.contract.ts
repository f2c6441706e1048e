import { webkitKind } from './drivers/webkit'
import { contractSuite } from './scenarios'

contractSuite(webkitKind)
