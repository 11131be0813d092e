"""The task file's metadata fields (``metadata.create`` / ``metadata.validate``) as widgets, for the Annotate and
Validate pages: a line edit per ``string`` field, a row of radio buttons with nothing checked per ``multiclass``
one (a value is stored only when the person gave it), each labelled with its description and whether it is
required. The library checks the values again (:func:`dynadesk.task_extras.check_metadata`); the page asks for a
missing required one first, naming it and putting the cursor there.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QButtonGroup,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QRadioButton,
    QWidget,
)

from dynadesk.task_extras import MetadataField

WHEN = {"correct": "Correct", "incorrect": "Incorrect", "flagged": "Flag"}


def asked(field: MetadataField, verdict: str | None) -> bool:
    """Whether ``field`` is asked with ``verdict`` (a create field, or a validation field of every verdict: always)."""
    return field.when is None or field.when == verdict


class MetaFieldsBox(QGroupBox):
    """One task's metadata fields; hidden when the task declares none."""

    def __init__(self, title: str, parent: QWidget | None = None):
        super().__init__(title, parent)
        self.form = QFormLayout(self)
        self.fields: tuple[MetadataField, ...] = ()
        self.edits: dict[str, QLineEdit] = {}
        self.groups: dict[str, QButtonGroup] = {}
        self.hide()

    def set_fields(self, fields: tuple[MetadataField, ...]) -> None:
        """Rebuild the widgets for ``fields`` (another task's, or the same one's afresh)."""
        while self.form.rowCount():
            self.form.removeRow(0)
        for g in self.groups.values():
            g.deleteLater()
        self.fields, self.edits, self.groups = tuple(fields), {}, {}
        for f in self.fields:
            title = f.name + (f" (for {WHEN[f.when]})" if f.when else "") + (" *" if f.required else "")
            tip = (f.description + " — " if f.description else "") + ("required" if f.required else "optional")
            if f.type == "multiclass":
                row, group = QWidget(), QButtonGroup(self)
                lay = QHBoxLayout(row)
                lay.setContentsMargins(0, 0, 0, 0)
                for i, label in enumerate(f.labels):
                    b = QRadioButton(label)
                    b.setAccessibleName(f"{f.name}: {label}")
                    group.addButton(b, i)
                    lay.addWidget(b)
                lay.addStretch(1)
                row.setToolTip(tip)
                self.groups[f.name] = group
                self.form.addRow(title, row)
            else:
                edit = QLineEdit()
                edit.setPlaceholderText(tip)
                edit.setAccessibleName(f.name)
                self.edits[f.name] = edit
                self.form.addRow(title, edit)
        self.setVisible(bool(self.fields))

    def value(self, name: str) -> str:
        if name in self.edits:
            return self.edits[name].text().strip()
        b = self.groups[name].checkedButton()
        return b.text() if b is not None else ""

    def values(self, verdict: str | None = None) -> dict[str, str]:
        """The values given for the fields asked with ``verdict``; empty ones are left out."""
        return {f.name: v for f in self.fields if asked(f, verdict) and (v := self.value(f.name))}

    def missing(self, verdict: str | None = None) -> MetadataField | None:
        """The first required field asked with ``verdict`` left empty (the cursor is put there), else None."""
        for f in self.fields:
            if asked(f, verdict) and f.required and not self.value(f.name):
                self.focus_widget(f.name).setFocus()
                return f
        return None

    def focus_widget(self, name: str) -> QWidget:
        """Where Tab lands for a field: its line edit, or its checked (else first) radio button."""
        if name in self.edits:
            return self.edits[name]
        group = self.groups[name]
        return group.checkedButton() or group.buttons()[0]

    def focus_chain(self) -> list[QWidget]:
        return [self.focus_widget(f.name) for f in self.fields]

    def clear(self) -> None:
        for e in self.edits.values():
            e.clear()
        for g in self.groups.values():
            checked = g.checkedButton()
            if checked is not None:
                g.setExclusive(False)
                checked.setChecked(False)
                g.setExclusive(True)


def missing_text(field: MetadataField) -> str:
    """The banner's line for a required field left empty."""
    return f"Fill in '{field.name}' first: it is required" + (f" ({field.description})." if field.description
                                                               else ".")
