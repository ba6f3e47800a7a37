"""The Ops view (`view.OpsView`), in one module per part: the table model, the charts, the
occurrence stepper and the view that puts them together."""
