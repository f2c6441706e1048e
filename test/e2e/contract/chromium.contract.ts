import { chromiumKind } from './drivers/chromium'
import { contractSuite } from './scenarios'

contractSuite(chromiumKind)
