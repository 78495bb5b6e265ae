class ChangeNoteType < ActiveRecord::Migration[6.1]
  def up
    %i[ar_row ar_tab ar_res].each { |t| change_column t, :memo, :text }
  end

  def down
    %i[ar_row ar_tab ar_res].each { |t| change_column t, :memo, :string }
  end
end
