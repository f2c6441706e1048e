import type { Preview } from '@storybook/react-vite'
import '../demo/styles.css'

const preview: Preview = {
  parameters: {
    layout: 'fullscreen',
    controls: { disable: true },
    actions: { disable: true },
  },
}

export default preview
