export interface ImportZoneOptions {
  importFile(file: File): Promise<void>
}

/** A file input that is also a drop target for Pi, Claude Code and Codex session files. */
export class ImportZone {
  constructor(zone: HTMLElement, input: HTMLInputElement, options: ImportZoneOptions) {
    const take = async (files: FileList | null) => {
      for (const file of files ?? []) await options.importFile(file)
      input.value = ''
    }
    input.addEventListener('change', () => void take(input.files))
    zone.addEventListener('dragover', (event) => {
      event.preventDefault()
      zone.classList.add('dropzone--over')
    })
    zone.addEventListener('dragleave', () => zone.classList.remove('dropzone--over'))
    zone.addEventListener('drop', (event) => {
      event.preventDefault()
      zone.classList.remove('dropzone--over')
      void take(event.dataTransfer?.files ?? null)
    })
  }
}
